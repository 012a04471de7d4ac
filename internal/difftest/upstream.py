# Upstream Placement (Debian's python3-placement) as a reference server for
# the differential test. This process imports Placement once, makes a
# template SQLite database, then forks one fresh server per line read on
# stdin ("<dir>"): the child copies the template into <dir>, serves on a
# free loopback port and prints "ready <pid> <port>". Forking after the
# imports is what makes a fresh upstream cost well under a second, which
# shrinking a failing sequence needs.
import ctypes
import json
import os
import shutil
import signal
import sqlite3
import sys
import urllib.parse
import wsgiref.simple_server as ws

# The imports a request needs, done once before any fork.
from placement import wsgi
from placement.handlers import allocation, allocation_candidate, inventory  # noqa
from placement.handlers import reshaper, resource_class, resource_provider  # noqa
from placement.handlers import root, trait, usage, aggregate  # noqa

CONF = """[api]
auth_strategy = noauth2
[placement_database]
connection = sqlite:///{db}
sync_on_startup = {sync}
[oslo_policy]
policy_file = {dir}/no-such-policy.yaml
enforce_new_defaults = false
enforce_scope = false
"""


class Handler(ws.WSGIRequestHandler):
    # As ref-server.sh: a request without Content-Type keeps none (wsgiref
    # would make it text/plain).
    def get_environ(self):
        env = super().get_environ()
        if self.headers.get('content-type') is None:
            del env['CONTENT_TYPE']
        return env

    def log_message(self, *args):
        pass


def with_harness(app, db):
    """Serves /__difftest/ beside the API, for the test alone: GET state
    lists the consumers and consumer types; POST forget?consumer=..&type=..
    deletes the given ones that nothing refers to. Upstream keeps the
    consumer (and consumer type) an allocation write created when a later
    check fails it; the test removes them (docs/api-compat.md)."""
    def wrapped(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if not path.startswith('/__difftest/'):
            return app(environ, start_response)
        qs = urllib.parse.parse_qs(environ.get('QUERY_STRING', ''))
        con = sqlite3.connect(db)
        try:
            if path == '/__difftest/state':
                body = {
                    'consumers': [r[0] for r in con.execute('SELECT uuid FROM consumers')],
                    'consumer_types': [r[0] for r in con.execute('SELECT name FROM consumer_types')],
                }
            else:
                n = 0
                for u in qs.get('consumer', []):
                    n += con.execute(
                        'DELETE FROM consumers WHERE uuid = ? AND NOT EXISTS '
                        '(SELECT 1 FROM allocations WHERE consumer_id = ?)', (u, u)).rowcount
                for t in qs.get('type', []):
                    n += con.execute(
                        'DELETE FROM consumer_types WHERE name = ? AND id NOT IN '
                        '(SELECT consumer_type_id FROM consumers WHERE consumer_type_id IS NOT NULL)',
                        (t,)).rowcount
                con.commit()
                body = {'deleted': n}
        finally:
            con.close()
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]
    return wrapped


def app_in(d, db, sync):
    with open(os.path.join(d, 'placement.conf'), 'w') as f:
        f.write(CONF.format(db=db, dir=d, sync=sync))
    os.environ['OS_PLACEMENT_CONFIG_DIR'] = d
    log = os.open(os.path.join(d, 'upstream.log'), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)
    return wsgi.init_application()


def main():
    template_dir = sys.argv[1]
    template = os.path.join(template_dir, 'template.db')
    pid = os.fork()
    if pid == 0:
        try:
            app_in(template_dir, template, 'true')
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not os.path.exists(template):
        sys.exit('upstream: could not make the template database')
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reap servers
    print('zygote ready', flush=True)
    for line in sys.stdin:
        d = line.strip()
        if not d:
            continue
        if os.fork() == 0:
            try:
                # Die with the zygote.
                ctypes.CDLL('libc.so.6').prctl(1, signal.SIGKILL)
                out = os.fdopen(os.dup(1), 'w')
                db = os.path.join(d, 'placement.db')
                shutil.copyfile(template, db)
                app = with_harness(app_in(d, db, 'false'), db)
                srv = ws.make_server('127.0.0.1', 0, app, handler_class=Handler)
                print('ready %d %d' % (os.getpid(), srv.server_port), file=out, flush=True)
                srv.serve_forever()
            finally:
                os._exit(1)


main()
