#!/usr/bin/env bash
# Make sure Debian's `chromium` browser is installed (only the browser test,
# tests/course/test_browser.py, needs it): install it with apt-get when we are root on
# Debian/Ubuntu, otherwise print one line that says what to run. Never a traceback.
if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "chromium is missing: installing it with apt-get"
    if (apt-get install -y -qq chromium >/dev/null 2>&1 \
        || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
        && { [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; }; then
        exit 0
    fi
    echo "error: apt-get could not install chromium; install it by hand (apt-get install chromium) and rerun" >&2
    exit 1
fi
echo "error: the chromium browser is missing; install it with: sudo apt-get install chromium" >&2
exit 1
