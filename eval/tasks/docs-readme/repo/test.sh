#!/bin/sh
grep -q 'export function greet' app.js && echo 'greet() is exported'
