#!/usr/bin/env python3
"""Regenerate gabbi_cases.json from the conformance gabbi files.

    python3 testdata/gen_gabbi_cases.py /work/shared/conformance/gabbits \
        > testdata/gabbi_cases.json

One entry per test of every *-rbac.yaml and *-policy.yaml file, with the
request line, the identity headers noauth2 reads, the fixture and the
expected status. $ENVIRON['X'] becomes the lower-cased name x, so project
ids compare equal exactly when upstream's would; $LAST_URL and $LOCATION
are resolved from the previous test.
"""
import glob
import json
import os
import re
import sys

import yaml

ENV = re.compile(r"\$ENVIRON\['([A-Z0-9_]+)'\]")


def env(v):
    if v is None:
        return None
    return ENV.sub(lambda m: m.group(1).lower(), str(v))


def main(gabbits):
    out = []
    files = sorted(glob.glob(os.path.join(gabbits, '*-rbac.yaml')) +
                   glob.glob(os.path.join(gabbits, '*-policy.yaml')))
    for path in files:
        doc = yaml.safe_load(open(path))
        defaults = (doc.get('defaults') or {}).get('request_headers') or {}
        last_url = location = None
        for t in doc['tests']:
            method = [m for m in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')
                      if m in t][0]
            url = t[method]
            if url == '$LAST_URL':
                url = last_url
            elif url == '$LOCATION':
                url = location
            last_url = url
            # The Location a test asserts is the one the next may use.
            location = ((t.get('response_headers') or {}).get('location') or
                        '').replace('$SCHEME://$NETLOC', '') or None
            h = dict(defaults)
            h.update(t.get('request_headers') or {})
            h = {k.lower(): v for k, v in h.items()}
            out.append({
                'file': os.path.basename(path),
                'fixture': doc['fixtures'][0],
                'name': t['name'],
                'method': method,
                'path': env(url),
                'token': env(h.get('x-auth-token')),
                'roles': env(h.get('x-roles')),
                'project': env(h.get('x-project-id')),
                'system_scope': env(h.get('openstack-system-scope')),
                'status': t.get('status', 200),
            })
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main(sys.argv[1])
