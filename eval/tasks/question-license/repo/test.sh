#!/bin/sh
grep -q version index.js && echo 'index.js is there'
