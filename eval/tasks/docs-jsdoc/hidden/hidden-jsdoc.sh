#!/bin/sh
set -e
grep -q '@param {number} fahrenheit' temperature.js || { echo 'no @param for fahrenheit'; exit 1; }
grep -q '@returns' temperature.js || { echo 'no @returns'; exit 1; }
echo ok
