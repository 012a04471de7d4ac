#!/usr/bin/env bash
# Starts a throw-away Keystone (Debian's keystone package) on loopback for
# the Keystone integration test, and creates the users the test acts as.
#
#   setup.sh DIR PORT
#
# DIR receives keystone.conf, the sqlite database, fernet and credential
# keys, keystone.log, keystone.pid (the uwsgi master: kill it to stop) and
# users.json (names, passwords, ids). Exits once Keystone answers and the
# users exist; non-zero (with the log's tail) when it cannot.
set -euo pipefail
dir=${1:?usage: setup.sh DIR PORT}
port=${2:?usage: setup.sh DIR PORT}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
url=http://127.0.0.1:$port/v3
admin_password=admin-secret-$RANDOM$RANDOM
parent=$PPID # the test, which Keystone must not outlive

for cmd in keystone-manage uwsgi; do
  command -v "$cmd" >/dev/null || { echo "setup.sh: $cmd not found (apt-get install keystone)" >&2; exit 2; }
done
# The interpreter keystone is installed for (python3 on PATH may be another
# one, e.g. pyenv's).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "setup.sh: python3 not found" >&2; exit 2; }
# Whatever fails below, show why.
trap 'rc=$?; [ $rc -eq 0 ] || tail -n 40 "$dir"/setup.log "$dir"/uwsgi.log "$dir"/keystone.log >&2 2>/dev/null; exit $rc' EXIT

cat >"$dir/keystone.conf" <<CONF
[DEFAULT]
log_file = $dir/keystone.log
[database]
connection = sqlite:///$dir/keystone.db
[fernet_tokens]
key_repository = $dir/fernet-keys
[fernet_receipts]
key_repository = $dir/fernet-keys
[credential]
key_repository = $dir/credential-keys
[token]
provider = fernet
# Keystone's own cache, in the memory of its single uwsgi process: without
# it every validation runs some 500 SQL queries (close to a second); with
# it a few milliseconds. Being in-process it is invalidated at once on
# revocation, and expiry and revocation are checked after the cached
# lookup, so the test sees what an uncached Keystone would answer.
[cache]
enabled = true
backend = dogpile.cache.memory
[identity]
# bcrypt's cheapest cost: the test authenticates often.
password_hash_rounds = 4
CONF

manage() { keystone-manage --config-file "$dir/keystone.conf" "$@" >>"$dir/setup.log" 2>&1; }
# keystone-manage spends seconds importing keystone: the key repositories
# (no database) are made while db_sync runs.
manage fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" & fernet=$!
manage credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" & credential=$!
manage db_sync
wait $fernet
wait $credential
# In WAL mode a request's open read transaction does not block the same
# request's write (the default rollback journal answers "database is
# locked" when Keystone creates anything).
"$py" -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' "$dir/keystone.db"
manage bootstrap --bootstrap-password "$admin_password" \
  --bootstrap-username admin --bootstrap-project-name admin --bootstrap-role-name admin \
  --bootstrap-service-name keystone --bootstrap-region-id RegionOne \
  --bootstrap-admin-url "$url" --bootstrap-public-url "$url" --bootstrap-internal-url "$url"

# The WSGI app under uwsgi (Debian's uwsgi-plugin-python3, a keystone
# dependency), in the background; --die-on-term makes SIGTERM stop it.
uwsgi --plugin python3 --http11-socket "127.0.0.1:$port" --wsgi-file /usr/bin/keystone-wsgi-public \
  --env "OS_KEYSTONE_CONFIG_FILES=$dir/keystone.conf" --master --processes 1 --threads 4 \
  --die-on-term --need-app --lazy-apps --buffer-size 65535 --logto "$dir/uwsgi.log" \
  --pidfile "$dir/keystone.pid" --daemonize2 "$dir/uwsgi.log"

# Create the projects, users and role assignments through the API, as an
# operator would.
KEYSTONE_URL=$url ADMIN_PASSWORD=$admin_password OUT=$dir/users.json "$py" - <<'PY'
import json, os, time, urllib.request, urllib.error

url, out = os.environ["KEYSTONE_URL"], os.environ["OUT"]

def call(method, path, body=None, token=None, want=(200, 201, 204)):
    req = urllib.request.Request(url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        # Generous: on a machine loaded by two CI runs a cold Keystone took
        # over 30 s for its first token.
        with urllib.request.urlopen(req, timeout=150) as resp:
            data = resp.read()
            return resp.status, resp.headers, json.loads(data) if data else None
    except urllib.error.HTTPError as e:
        if e.code in want:
            return e.code, e.headers, None
        raise SystemExit(f"{method} {path}: {e.code} {e.read()[:300]!r}")

# Wait for uwsgi to load the app.
deadline = time.time() + 60
while True:
    try:
        urllib.request.urlopen(url, timeout=2).read()
        break
    except Exception:
        if time.time() > deadline:
            raise SystemExit("keystone did not answer within 60 s")
        time.sleep(0.2)

# Keystone spends a good part of a second on a cold request: make few.
_, headers, body = call("POST", "/auth/tokens", {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": os.environ["ADMIN_PASSWORD"]}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
admin = headers["X-Subject-Token"]
projects = {"admin": body["token"]["project"]["id"]}
_, _, found = call("GET", "/roles", token=admin)
roles = {r["name"]: r["id"] for r in found["roles"]}
# Keystone 22's bootstrap makes admin, member and reader; later ones also
# make service.
if "service" not in roles:
    roles["service"] = call("POST", "/roles", {"role": {"name": "service"}}, token=admin)[2]["role"]["id"]
for p in ("service", "demo", "other"):
    projects[p] = call("POST", "/projects", {"project": {"name": p, "domain_id": "default"}},
                       token=admin)[2]["project"]["id"]
users = {"admin": {"password": os.environ["ADMIN_PASSWORD"], "project": "admin", "role": "admin",
                   "id": body["token"]["user"]["id"]}}
# placement is placementd's own service user, nova a service calling
# Placement, the others project users; stranger belongs to another project.
for name, project, role in (("placement", "service", "service"), ("nova", "service", "service"),
                            ("demo-member", "demo", "member"), ("demo-reader", "demo", "reader"),
                            ("stranger", "other", "member")):
    password = name + "-secret"
    uid = call("POST", "/users", {"user": {"name": name, "domain_id": "default", "password": password}},
               token=admin)[2]["user"]["id"]
    call("PUT", f"/projects/{projects[project]}/users/{uid}/roles/{roles[role]}", token=admin)
    users[name] = {"password": password, "project": project, "role": role, "id": uid}
with open(out, "w") as f:
    json.dump({"auth_url": url, "projects": projects, "roles": roles, "users": users}, f, indent=1)
PY
pid=$(cat "$dir/keystone.pid")
# Should the test die without its cleanup (a -timeout panic, a kill), stop
# Keystone with it rather than leave it running.
( while kill -0 "$parent" 2>/dev/null; do sleep 2; done
  kill -0 "$pid" 2>/dev/null && grep -q uwsgi "/proc/$pid/cmdline" 2>/dev/null && kill "$pid" ) </dev/null >/dev/null 2>&1 &
echo "keystone at $url (pid $pid)"
