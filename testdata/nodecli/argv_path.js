// Prints the program's own path as process.argv[1] gives it.
process.stdout.write(process.argv[1] + "\n");
