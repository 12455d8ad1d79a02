// A promise rejected with something that is not an Error, never handled:
// Node's ERR_UNHANDLED_REJECTION, exit status 1.
process.stdout.write("start\n");
Promise.reject("quota exceeded");
