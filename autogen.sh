#!/bin/sh
# Generate ./configure from configure.ac and Makefile.am.
exec autoreconf --force --install -Wall
