#!/bin/sh
# Usage: count.sh FILE  prints the number of lines in FILE.
wc -l < "$1" | tr -d ' '
