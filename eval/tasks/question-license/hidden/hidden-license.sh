#!/bin/sh
set -e
grep -q 'MIT License' LICENSE || { echo 'LICENSE is not the MIT license'; exit 1; }
grep -q 'Permission is hereby granted' LICENSE || { echo 'LICENSE lacks the MIT grant'; exit 1; }
echo ok
