// fetch is I/O: not declared, so a script that names it does not type-check.
export default typeof fetch;
