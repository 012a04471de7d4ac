# keystonemiddleware's auth_token (Debian's python3-keystonemiddleware, the
# one upstream Placement runs) in front of an application that answers
# 200 "ok", for the Keystone integration test to compare placementd's
# answers with: argv[1] is a JSON object of variants, name -> the
# middleware's options (as a paste.ini [filter:authtoken] gives them).
# Each variant is served on a free loopback port, announced on stdout as
# "ready NAME PORT"; the process exits when stdin closes.
import json
import socketserver
import logging
import sys
import threading
import wsgiref.simple_server as ws

from keystonemiddleware import auth_token

logging.basicConfig(level=logging.ERROR)


def app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'ok']


class Handler(ws.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, ws.WSGIServer):
    daemon_threads = True


for name, conf in json.loads(sys.argv[1]).items():
    srv = ws.make_server('127.0.0.1', 0, auth_token.AuthProtocol(app, conf),
                         server_class=Server, handler_class=Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print('ready', name, srv.server_port, flush=True)
sys.stdin.read()
