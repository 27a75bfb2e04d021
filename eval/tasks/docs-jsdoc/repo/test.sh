#!/bin/sh
grep -q 'export function toCelsius' temperature.js && echo 'toCelsius() is exported'
