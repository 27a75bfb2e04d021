#!/bin/sh
set -e
test -f README.md || { echo 'no README.md'; exit 1; }
grep -q 'greet(' README.md || { echo 'README does not show greet('; exit 1; }
grep -q 'Hello, ' README.md || { echo 'README does not show what it returns'; exit 1; }
echo ok
