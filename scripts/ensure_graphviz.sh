#!/usr/bin/env bash
# Make sure graphviz's `dot` program is on PATH: install it with apt-get when we are root on
# Debian/Ubuntu, otherwise print one line that says what to run. Never a traceback.
if command -v dot >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "graphviz's 'dot' is missing: installing it with apt-get"
    if (apt-get install -y -qq graphviz >/dev/null 2>&1 \
        || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq graphviz >/dev/null 2>&1)) \
        && command -v dot >/dev/null 2>&1; then
        exit 0
    fi
    echo "error: apt-get could not install graphviz; install it by hand (apt-get install graphviz) and rerun" >&2
    exit 1
fi
echo "error: graphviz's 'dot' program is missing; install it with: sudo apt-get install graphviz (or: brew install graphviz / conda install -c conda-forge graphviz)" >&2
exit 1
