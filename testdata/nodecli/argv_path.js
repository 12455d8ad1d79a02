// Prints the program's own path as process.argv[1] gives it, and its cwd.
process.stdout.write(process.argv[1] + "\n" + process.cwd() + "\n");
