#!/bin/sh
set -e
[ "$(sh count.sh sample.txt)" = 2 ] || { echo "lines broke"; exit 1; }
[ "$(sh count.sh --words sample.txt)" = 5 ] || { echo "--words did not print 5"; exit 1; }
echo ok
