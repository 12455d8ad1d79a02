export const title: string = document.title;
export const home = process.env.HOME;
export const fs = require("node:fs");
