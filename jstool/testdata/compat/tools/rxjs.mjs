import { from, of, range, zip, lastValueFrom, firstValueFrom, BehaviorSubject } from "rxjs";
import { map, filter, scan, reduce, bufferCount, distinctUntilChanged, take, toArray, mergeMap, catchError, debounceTime } from "rxjs/operators";

// No timers: node's real clock would make their order depend on the
// machine's load (debounceTime over a source that completes at once emits
// on completion, without waiting).
export async function execute() {
  const squares = await lastValueFrom(range(1, 10).pipe(filter((x) => x % 2 === 1), map((x) => x * x), toArray()));
  const running = await lastValueFrom(from([3, 1, 4, 1, 5]).pipe(scan((a, b) => a + b, 0), toArray()));
  const buffered = await lastValueFrom(of(1, 2, 3, 4, 5).pipe(bufferCount(2), toArray()));
  const distinct = await lastValueFrom(of(1, 1, 2, 2, 2, 1, 3).pipe(distinctUntilChanged(), toArray()));
  const zipped = await lastValueFrom(zip(of("a", "b", "c"), of(1, 2)).pipe(toArray()));
  const flat = await lastValueFrom(of(1, 2).pipe(mergeMap((x) => of(x, x * 10)), toArray()));
  const caught = await lastValueFrom(of(1).pipe(map(() => { throw new Error("boom"); }), catchError((e) => of(`caught ${e.message}`))));
  const subject = new BehaviorSubject(0);
  const seen = [];
  subject.subscribe((v) => seen.push(v));
  subject.next(1);
  subject.next(2);
  const debounced = await lastValueFrom(of(1, 2, 3).pipe(debounceTime(5), toArray()));
  const total = await firstValueFrom(range(1, 100).pipe(reduce((a, b) => a + b)));
  return { squares, running, buffered, distinct, zipped, flat, caught, seen, debounced, total };
}
