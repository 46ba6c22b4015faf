#!/usr/bin/env bash
# What the tests need from the operating system, installed when missing: `npm test` runs this
# first, so a fresh Debian machine needs nothing by hand. As root it installs with apt-get;
# otherwise it names the packages to install and stops (a missing service is never a skipped test).
#   redis-server  the limiter, revocation and sign-in store tests start their own servers
#   postgresql    the limiter's rate-limiter-flexible store tests run initdb and postgres (the
#                 server binaries under /usr/lib/postgresql/<version>/bin) on a free port of their own
#   memcached     the same tests start their own memcached on a free port
#   chromium      the sign-in browser test (test/demo/demo-browser.test.ts; CHROMIUM_PATH overrides)
#   nginx, libnginx-mod-http-js, haproxy
#                 test/binding/proxies.test.ts runs docs/mtls.md's nginx (with its njs module) and
#                 HAProxy settings as printed, on free loopback ports of their own
#   openssl, curl the same test runs the guide's openssl lines and its curl line
#   valgrind      the speed check of .ci/run counts the cache hit's instructions with callgrind
set -euo pipefail

missing=()
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || missing+=(redis-server)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null && compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v memcached >/dev/null || missing+=(memcached)
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null; then missing+=(chromium); fi
command -v nginx >/dev/null || missing+=(nginx)
# njs is a module of nginx's (Debian installs it where nginx loads it); no nginx, no module either.
command -v nginx >/dev/null && [ -e /usr/lib/nginx/modules/ngx_http_js_module.so ] || missing+=(libnginx-mod-http-js)
command -v haproxy >/dev/null || missing+=(haproxy)
command -v openssl >/dev/null || missing+=(openssl)
command -v curl >/dev/null || missing+=(curl)
command -v valgrind >/dev/null || missing+=(valgrind)

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "The tests need: ${missing[*]}. Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}) and run npm test again." >&2
  exit 1
fi
echo "Installing what the tests need: ${missing[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists first: a fresh image has none, and a stale one names versions gone from the mirror.
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
