// Never ends: stopped by the script's own fuel or time.
let n = 0;
while (true) {
  n++;
}
