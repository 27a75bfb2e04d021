#!/bin/sh
set -e
[ "$(sh count.sh sample.txt)" = 2 ] && echo "lines: ok"
