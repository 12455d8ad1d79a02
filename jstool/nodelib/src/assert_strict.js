"use strict";
module.exports = require("node:assert").strict;
