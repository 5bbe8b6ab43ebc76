#!/usr/bin/env bash
# The docs site: build it with warnings as errors, serve it on localhost, and screenshot its
# landing page and a tutorial in headless Chromium (Debian's package). A page that does not
# answer 200, or a screenshot that is not a non-empty PNG, fails. The PNGs go to $CI_ARTIFACTS
# (default .ci/artifacts/), which is not committed.
#   bash .ci/docs.sh VENV
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.ci-venv}
artifacts=${CI_ARTIFACTS:-$PWD/.ci/artifacts}
mkdir -p "$artifacts"

"$venv/bin/pip" install -q -e ".[docs]"
rm -rf site
NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --site-dir site

if [ ! -x /usr/bin/chromium ]; then
    apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null
fi

port=$("$venv/bin/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$venv/bin/python" -m http.server "$port" --bind 127.0.0.1 --directory site >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT

shoot() {  # shoot PATH NAME: the page at PATH must answer 200; its screenshot goes to NAME.png
    local url="http://127.0.0.1:$port/$1" png="$artifacts/$2.png" profile status
    status=$("$venv/bin/python" - "$url" <<'PY'
import sys, time, urllib.error, urllib.request

for _ in range(50):  # the server takes a moment to listen
    try:
        print(urllib.request.urlopen(sys.argv[1], timeout=10).status)
        break
    except urllib.error.HTTPError as e:
        print(e.code)
        break
    except OSError:
        time.sleep(0.1)
else:
    print("no answer")
PY
)
    if [ "$status" != 200 ]; then
        echo "docs: $url answered $status" >&2
        exit 1
    fi
    profile=$(mktemp -d)
    rm -f "$png"
    timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size=1280,1000 --hide-scrollbars \
        --screenshot="$png" "$url" >/dev/null 2>&1
    rm -rf "$profile"
    if [ ! -s "$png" ] || [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
        echo "docs: no screenshot of $url" >&2
        exit 1
    fi
    echo "docs: $url -> $png ($(stat -c %s "$png") bytes)"
}

shoot "" landing
shoot "tutorials/profile/" tutorial-profile
echo "docs: screenshots in $artifacts"
