#!/bin/sh
set -e
first=$(grep -m1 '^## ' CHANGELOG.md)
[ "$first" = '## 1.1.0' ] || { echo "the first entry is $first"; exit 1; }
grep -qi 'trailing comma' CHANGELOG.md || { echo 'no mention of the trailing comma'; exit 1; }
grep -q '^## 1.0.0' CHANGELOG.md || { echo '1.0.0 was lost'; exit 1; }
echo ok
