#!/usr/bin/python3
"""Random differential cases: Python jsonschema vs this package.

Writes a JSON document of random validations (upstream Placement schemas
with mutated instances, and random schemas), repr/pprint renderings and uuid
format checks, each with what Python (jsonschema, repr, pprint.pformat)
answers. TestDifferential (differential_test.go) replays it when
SCHEMA_DIFF_CASES names the file:

    /usr/bin/python3 httpapi/schema/testdata/gen_random.py \
        --placement /work/ref -n 20000 --seed 1 > /tmp/diff.json
    SCHEMA_DIFF_CASES=/tmp/diff.json go test -run TestDifferential ./httpapi/schema/

Validations use jsonschema's own FormatChecker() (Compile on the Go side);
the request-body "uuid" check (CompileBody) is covered by gen_cases.py.
Characters unassigned in the Python's Unicode database are not generated
(Go's tables may be newer, which changes what repr() escapes).
"""

import argparse
import copy
import json
import pprint
import random
import struct
import sys
import unicodedata

import jsonschema

parser = argparse.ArgumentParser()
parser.add_argument("--placement", required=True)
parser.add_argument("-n", type=int, default=5000)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
sys.path.insert(0, args.placement)

from placement.schemas import (  # noqa: E402
    aggregate, allocation, allocation_candidate, inventory, reshaper,
    resource_class, resource_provider, trait, usage)

rnd = random.Random(args.seed)
U = "5f9588de-079d-462a-a459-408524ab9b60"

placement = [getattr(m, n) for m in (aggregate, allocation, allocation_candidate, inventory,
    reshaper, resource_class, resource_provider, trait, usage) for n in dir(m)
    if n.isupper() and isinstance(getattr(m, n), dict) and not n.startswith('_')]

def rstr():
    choices = ["", "a", "VCPU", "DISK_GB", "CUSTOM_X", U, U.upper(), "x y z " * rnd.randint(0, 20),
               "it's", 'say "hi"', "é\u2028\t\n", "a" * rnd.randint(0, 300), "resources1", "resources01",
               "required", "member_of", "in_tree_x", "bogus", "none", "isolate", "0", "12", "-1",
               "\U0001F600", "{%s}" % U, U + "\n", "long word " * 12]
    return rnd.choice(choices)

def rnum():
    return rnd.choice([0, 1, -1, 2, 5, 1.0, 0.5, 2147483647, 2147483648, 10**30, 1e16, 1e-5,
                       3.5e38, -0.0, 1.5, 100, 255, 256])

def rscalar():
    return rnd.choice([rstr, rnum, lambda: None, lambda: True, lambda: False])()

def rval(depth=0):
    k = rnd.random()
    if depth > 3 or k < 0.5:
        return rscalar()
    if k < 0.75:
        return [rval(depth + 1) for _ in range(rnd.randint(0, 4))]
    return {rstr(): rval(depth + 1) for _ in range(rnd.randint(0, 4))}

def mutate(v, depth=0):
    r = rnd.random()
    if r < 0.08:
        return rval(depth)
    if isinstance(v, dict):
        v = dict(v)
        keys = list(v)
        if keys and rnd.random() < 0.2:
            del v[rnd.choice(keys)]
        if rnd.random() < 0.15:
            v[rstr()] = rval(depth + 1)
        for k in list(v):
            if rnd.random() < 0.5:
                v[k] = mutate(v[k], depth + 1)
        if rnd.random() < 0.3:
            items = list(v.items()); rnd.shuffle(items); v = dict(items)
        return v
    if isinstance(v, list):
        v = [mutate(e, depth + 1) for e in v]
        if rnd.random() < 0.2 and v:
            v.append(copy.deepcopy(v[0]))
        if rnd.random() < 0.1:
            v = []
        return v
    if rnd.random() < 0.3:
        return rscalar()
    return v

def sample(schema, depth=0):
    """Produce a roughly valid instance for a schema."""
    if schema is True or schema is False or depth > 6:
        return rval()
    if "anyOf" in schema:
        return sample(rnd.choice(schema["anyOf"]), depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = rnd.choice(t)
    if "enum" in schema:
        return rnd.choice(schema["enum"])
    if t == "object":
        out = {}
        for k, s in schema.get("properties", {}).items():
            if k in schema.get("required", []) or rnd.random() < 0.5:
                out[k] = sample(s, depth + 1)
        for p, s in schema.get("patternProperties", {}).items():
            for _ in range(rnd.randint(0, 2)):
                key = {"^[A-Z0-9_]+$": rnd.choice(["VCPU", "DISK_GB", "MEMORY_MB"]),
                       "^[0-9a-fA-F-]{36}$": rnd.choice([U, "0b2c687e-89eb-47f6-bb68-2fc83e28032a"])}.get(p, rnd.choice(["resources", "resources1", "required_x", "member_of2", "in_tree", "g1"]))
                out[key] = sample(s, depth + 1)
        return out
    if t == "array":
        return [sample(schema.get("items", {}), depth + 1) for _ in range(rnd.randint(1, 3))]
    if t == "integer":
        return rnd.choice([1, 2, 10, 0])
    if t == "number":
        return rnd.choice([1.0, 16.0, 1])
    if t == "string":
        if schema.get("format") == "uuid":
            return U
        if "pattern" in schema:
            return rnd.choice(["CUSTOM_A", "VCPU", "1", "all"])
        return rnd.choice(["x", "p", "VCPU:1"])
    if t == "null":
        return None
    return rval()

# random generic schemas
def rschema(depth=0):
    s = {}
    kws = ["type", "properties", "required", "additionalProperties", "patternProperties",
           "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems",
           "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
           "multipleOf", "minLength", "maxLength", "pattern", "format", "anyOf", "oneOf",
           "allOf", "not"]
    for kw in rnd.sample(kws, rnd.randint(1, 5)):
        if kw == "type":
            ts = ["string", "integer", "number", "boolean", "object", "array", "null"]
            s[kw] = rnd.choice(ts) if rnd.random() < 0.7 else rnd.sample(ts, 2)
        elif kw in ("properties", "patternProperties"):
            if depth > 2: continue
            keys = ["a", "b", "c"] if kw == "properties" else ["^a", "b$", "[0-9]"]
            s[kw] = {k: rschema(depth + 1) for k in rnd.sample(keys, rnd.randint(1, 3))}
        elif kw == "required":
            s[kw] = rnd.sample(["a", "b", "c", "d"], rnd.randint(1, 3))
        elif kw == "additionalProperties":
            # Only the boolean form: with a subschema, Python iterates the
            # extra properties in set (hash-randomised) order.
            s[kw] = rnd.random() < 0.2
        elif kw in ("minProperties", "maxProperties", "minItems", "maxItems", "minLength", "maxLength"):
            s[kw] = rnd.randint(0, 3)
        elif kw == "items":
            s[kw] = rschema(depth + 1) if depth <= 2 else {}
        elif kw == "uniqueItems":
            s[kw] = True
        elif kw == "enum":
            s[kw] = [rscalar() for _ in range(3)]
        elif kw == "const":
            s[kw] = rscalar()
        elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            s[kw] = rnd.choice([0, 1, 2.5, -1, 100])
        elif kw == "multipleOf":
            s[kw] = rnd.choice([2, 0.5, 3])
        elif kw == "pattern":
            s[kw] = rnd.choice(["^a", "b$", "^[A-Z_]+$", "[0-9]"])
        elif kw == "format":
            s[kw] = "uuid"
        elif kw in ("anyOf", "oneOf", "allOf"):
            if depth > 2: continue
            s[kw] = [rschema(depth + 1) for _ in range(rnd.randint(1, 3))]
        elif kw == "not":
            if depth > 2: continue
            s[kw] = rschema(depth + 1)
    return s

def rinst_generic():
    r = rnd.random()
    if r < 0.4:
        return {rnd.choice(["a", "b", "c", "d", "a1", "xb", "zz"]): rval(1) for _ in range(rnd.randint(0, 4))}
    return rval()

def rchar():
    while True:
        c = rchar0()
        if unicodedata.category(c) != "Cn":
            return c
def rchar0():
    r = rnd.random()
    if r < 0.5: return chr(rnd.randint(32, 126))
    if r < 0.6: return rnd.choice(" \t\n\r\x0b\x0c\x1c\x85\u2028\u00a0\u3000")
    if r < 0.8: return chr(rnd.randint(0, 0x2fff))
    c = rnd.choice([rnd.randint(0x3000, 0xffff), 0x1F600, 0x10000, 0xE0001, 0xF0000, 0x1D7CE, 0x1D7D8, 0x20000])
    if 0xd800 <= c <= 0xdfff: c = 0x41
    return chr(c)
def prstr():
    n = rnd.choice([0, 1, 3, 10, 40, 80, 150])
    s = "".join(rchar() for _ in range(n))
    if rnd.random() < 0.3: s = " ".join(s[i:i+rnd.randint(1,12)] for i in range(0, len(s), 7))
    return s
def rfloat():
    r = rnd.random()
    if r < 0.3:
        return struct.unpack('d', struct.pack('Q', rnd.getrandbits(64)))[0]
    if r < 0.6:
        return rnd.uniform(-1, 1) * 10 ** rnd.randint(-20, 25)
    return float(rnd.randint(-10**6, 10**6)) / rnd.choice([1, 10, 100, 1000, 3])
def prval(d=0):
    r = rnd.random()
    if d > 4 or r < 0.45:
        return rnd.choice([prstr, rfloat, lambda: rnd.randint(-10**20, 10**20), lambda: None, lambda: True])()
    if r < 0.7: return [prval(d+1) for _ in range(rnd.randint(0, 6))]
    return {prstr(): prval(d+1) for _ in range(rnd.randint(0, 6))}


def validations(n):
    out = []
    for i in range(n):
        if rnd.random() < 0.6:
            schema = rnd.choice(placement)
            inst = mutate(sample(schema))
        else:
            schema = rschema()
            inst = rinst_generic()
        try:
            inst_text = json.dumps(inst, ensure_ascii=rnd.random() < 0.5)
        except ValueError:
            continue
        inst = json.loads(inst_text)
        try:
            jsonschema.validate(inst, schema, format_checker=jsonschema.FormatChecker())
            want = None
        except jsonschema.ValidationError as e:
            want = str(e)
        except Exception as e:
            continue
        out.append({"schema": json.dumps(schema), "instance": inst_text, "want": want})
    return out


def renderings(n):
    out = []
    for _ in range(n):
        v = prval()
        try:
            t = json.dumps(v, ensure_ascii=rnd.random() < 0.5, allow_nan=False)
        except ValueError:
            continue
        v = json.loads(t)
        out.append({"json": t, "repr": repr(v), "pformat": pprint.pformat(v, width=72)})
    # uuids
    uu = []
    base = "5f9588de-079d-462a-a459-408524ab9b60"
    for _ in range(n):
        s = list(base)
        for _ in range(rnd.randint(0, 3)):
            i = rnd.randrange(len(s))
            op = rnd.random()
            if op < 0.4: s[i] = rchar() if rnd.random() < 0.5 else rnd.choice("-_{}x0 +\u0661\uff10\u00a0:urnid")
            elif op < 0.7: s.insert(i, rnd.choice("-_{}x0 +\u0661\u00a0:"))
            else: del s[i]
        s = "".join(s)
        if rnd.random() < 0.1: s = rnd.choice(["urn:uuid:", "{", "uuid:", "0x"]) + s
        uu.append({"s": s, "ok": jsonschema.FormatChecker().conforms(s, "uuid")})
    return out, uu


reprs, uuids = renderings(args.n)
json.dump({"validations": validations(args.n), "reprs": reprs,
           "uuids": uuids}, sys.stdout)
