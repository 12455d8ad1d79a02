#!/usr/bin/env node
// The bin of a package marked "sideEffects": false only imports its CLI,
// as uuid's does: node runs it all the same.
import "../lib/cli.js";
