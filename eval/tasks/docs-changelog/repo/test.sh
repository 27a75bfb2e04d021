#!/bin/sh
grep -q '^# Changelog' CHANGELOG.md && echo 'changelog has its title'
