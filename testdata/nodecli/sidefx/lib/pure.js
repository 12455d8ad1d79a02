export function pure(what) {
  console.log(what);
  return what;
}
