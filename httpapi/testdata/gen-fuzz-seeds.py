#!/usr/bin/python3
"""Seed the httpapi fuzz corpora with the conformance files' requests.

Reads every gabbi file in the conformance suite, resolves the requests'
variables to identifiers of the fuzz fixture (api_fuzz_test.go), and
writes each request body or query string as a seed of the fuzz target
that parses it, in testdata/fuzz/<Target>/. Run from anywhere:

    /usr/bin/python3 httpapi/testdata/gen-fuzz-seeds.py [GABBITS_DIR]

Seeds are named by a hash of their content, so running it again only
adds what is new.
"""

import glob
import hashlib
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
GABBITS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "..", "shared", "conformance", "gabbits")

# The fuzz fixture's identifiers (constants in api_fuzz_test.go).
ROOT = "f0000000-0000-4000-8000-000000000001"
CHILD = "f0000000-0000-4000-8000-000000000002"
SHARED = "f0000000-0000-4000-8000-000000000003"
EMPTY = "f0000000-0000-4000-8000-000000000004"
MISSING = "f0000000-0000-4000-8000-0000000000ff"
CONSUMER = "c0000000-0000-4000-8000-000000000001"
TYPED = "c0000000-0000-4000-8000-000000000002"
NEW = "c0000000-0000-4000-8000-00000000000f"
AGG = "a0000000-0000-4000-8000-000000000001"
AGG2 = "a0000000-0000-4000-8000-000000000002"

PROVIDERS = [ROOT, CHILD, SHARED, EMPTY, MISSING]


def value_for(name):
    """The fixture value standing for a gabbi variable."""
    n = name.upper()
    h = int(hashlib.sha1(n.encode()).hexdigest(), 16)
    if "AGG" in n:
        return [AGG, AGG2][h % 2]
    if "PROJECT" in n:
        return "fuzz-project"
    if "USER" in n:
        return "fuzz-user"
    if "CONSUMER" in n or "INSTANCE" in n or "MIGRATION" in n:
        return [CONSUMER, TYPED, NEW][h % 3]
    if "CLASS" in n:
        return "CUSTOM_FUZZ"
    if "TRAIT" in n:
        return "CUSTOM_FUZZ_TRAIT"
    if n.endswith("NAME"):
        return "fuzz-root"
    return PROVIDERS[h % len(PROVIDERS)]


VAR = re.compile(r"""\$ENVIRON\[(['"])(.*?)\1\]""")
RESPONSE = re.compile(r"""(\$HISTORY\[(['"]).*?\2\]\.)?\$RESPONSE\[(['"]).*?\3\]""")


def substitute(s):
    s = VAR.sub(lambda m: value_for(m.group(2)), s)
    return RESPONSE.sub(ROOT, s)


def resolve(obj):
    """Substitutes variables in keys and values of a request body."""
    if isinstance(obj, str):
        return substitute(obj)
    if isinstance(obj, list):
        return [resolve(v) for v in obj]
    if isinstance(obj, dict):
        return {resolve(k) if isinstance(k, str) else k: resolve(v) for k, v in obj.items()}
    return obj


def minor_of(headers):
    for k, v in (headers or {}).items():
        if k.lower() == "openstack-api-version":
            m = re.search(r"(\d+)\.(\d+)", str(v))
            if m:
                return int(m.group(2))
            if "latest" in str(v):
                return 255
    return None


# (method, path regexp) -> (target, op)
BODY_ROUTES = [
    ("POST", r"^/resource_providers$", "FuzzProviderBody", 0),
    ("PUT", r"^/resource_providers/[^/]+$", "FuzzProviderBody", 1),
    ("PUT", r"^/resource_providers/[^/]+/inventories$", "FuzzInventoriesBody", 0),
    ("POST", r"^/resource_providers/[^/]+/inventories$", "FuzzInventoriesBody", 1),
    ("PUT", r"^/resource_providers/[^/]+/inventories/[^/]+$", "FuzzInventoriesBody", 2),
    ("PUT", r"^/resource_providers/[^/]+/traits$", "FuzzProviderTraitsBody", 0),
    ("PUT", r"^/resource_providers/[^/]+/aggregates$", "FuzzAggregatesBody", 0),
    ("PUT", r"^/allocations/[^/]+$", "FuzzAllocationsBody", 0),
    ("POST", r"^/allocations$", "FuzzPostAllocationsBody", 0),
    ("POST", r"^/reshaper$", "FuzzReshaperBody", 0),
    ("POST", r"^/resource_classes$", "FuzzResourceClassBody", 0),
    ("PUT", r"^/resource_classes/[^/]+$", "FuzzResourceClassBody", 1),
]
QUERY_ROUTES = {
    "/resource_providers": "FuzzProvidersQuery",
    "/allocation_candidates": "FuzzCandidatesQuery",
    "/usages": "FuzzUsagesQuery",
    "/traits": "FuzzTraitsQuery",
}


def go_quote(b):
    out = ['"']
    for c in b:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    out.append('"')
    return "".join(out)


def write_seed(target, lines, base=HERE):
    text = "go test fuzz v1\n" + "".join(l + "\n" for l in lines)
    d = os.path.join(base, "fuzz", target)
    os.makedirs(d, exist_ok=True)
    name = "conformance-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    path = os.path.join(d, name)
    if os.path.exists(path):
        return False
    with open(path, "w") as f:
        f.write(text)
    return True


SCHEMA_TESTDATA = os.path.join(HERE, "..", "schema", "testdata")
# Query parameters the normalizers of FuzzQueryNormalize read, by kind.
NORMALIZED = [("resources", 0), ("required", 1), ("member_of", 2)]
AUTH_OPS = {"GET": 0, "POST": 1, "PUT": 2, "DELETE": 3}


def header(headers, name):
    for k, v in (headers or {}).items():
        if k.lower() == name:
            return str(v)
    return None


def edge_seeds(method, query, body, headers):
    """Seeds of the targets of edges_fuzz_test.go and schema's FuzzPyLoads
    from one request: its body, its headers, its query's values."""
    n = 0
    if body is not None:
        n += write_seed("FuzzPyLoads", ["[]byte(%s)" % go_quote(body)], SCHEMA_TESTDATA)
    version = header(headers, "openstack-api-version")
    if version is not None:
        n += write_seed("FuzzMicroversionHeader", ["string(%s)" % go_quote(version.encode())])
    token = header(headers, "x-auth-token")
    if token is not None:
        roles = header(headers, "x-roles")
        scope = header(headers, "openstack-system-scope") or ""
        n += write_seed("FuzzNoauthHeaders", [
            "uint8(%d)" % AUTH_OPS.get(method, 4), "string(%s)" % go_quote(substitute(token).encode()),
            "string(%s)" % go_quote((roles or "").encode()), "bool(%s)" % ("true" if roles is not None else "false"),
            "string(%s)" % go_quote(scope.encode())])
    for part in query.split("&") if query else []:
        key, _, value = part.partition("=")
        for prefix, kind in NORMALIZED:
            if key.startswith(prefix):
                from urllib.parse import unquote_plus
                n += write_seed("FuzzQueryNormalize", [
                    "uint8(%d)" % (kind | 4 | 8), "string(%s)" % go_quote(unquote_plus(value).encode())])
    return n


def main():
    written = 0
    for fn in sorted(glob.glob(os.path.join(GABBITS, "*.yaml"))):
        doc = yaml.safe_load(open(fn))
        defaults = doc.get("defaults") or {}
        default_minor = minor_of(defaults.get("request_headers"))
        last_url = None
        for test in doc.get("tests") or []:
            method = next((m for m in ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD") if m in test), None)
            if method is None:
                continue
            url = str(test[method])
            if url.startswith("$LAST_URL"):
                if last_url is None:
                    continue
                url = last_url + url[len("$LAST_URL"):]
            elif url.startswith("$LOCATION"):
                continue
            url = substitute(url)
            last_url = url.split("?")[0]
            minor = minor_of(test.get("request_headers"))
            if minor is None:
                minor = default_minor if default_minor is not None else 0
            path, _, query = url.partition("?")
            headers = dict(defaults.get("request_headers") or {})
            headers.update(test.get("request_headers") or {})
            data = test.get("data")
            body = None
            if isinstance(data, str) and not data.startswith("$") and not data.startswith("<@"):
                body = data.encode()
            elif data is not None and not isinstance(data, str):
                body = json.dumps(resolve(data)).encode()
            written += edge_seeds(method, query, body, headers)
            if method == "GET" and query and path in QUERY_ROUTES:
                written += write_seed(QUERY_ROUTES[path], [
                    "uint8(%d)" % minor, "string(%s)" % go_quote(query.encode())])
                continue
            if "data" not in test:
                continue
            data = test["data"]
            if isinstance(data, str):
                if data.startswith("$") or data.startswith("<@"):
                    continue
                body = data.encode()
            else:
                body = json.dumps(resolve(data)).encode()
            for m, pattern, target, op in BODY_ROUTES:
                if m == method and re.match(pattern, path):
                    written += write_seed(target, [
                        "uint8(%d)" % op, "uint8(%d)" % minor, "[]byte(%s)" % go_quote(body)])
                    break
    print("wrote %d new seeds" % written)


if __name__ == "__main__":
    main()
