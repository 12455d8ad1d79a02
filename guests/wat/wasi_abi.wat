;; wasi_abi: Guest ABI v1 plus two virtual WASI imports.
;;
;; The module imports wasi_snapshot_preview1 random_get and clock_time_get,
;; so wasmgate runs it under the virtual WASI profile, but it is called
;; through the ABI v1 exports (the calling convention follows the exports).
;; It ignores its input and returns
;;   {"random":"<8 random bytes as 16 hex digits>","time":"<realtime clock, ns>"}
;; The time is a string of decimal digits: nanoseconds since 1970 exceed
;; 2^53, beyond which canonical JSON has no integers.
;;
;; In wasmgate the clock is fixed at 2000-01-01T00:00:00Z
;; ("time":"946684800000000000") and random_get is a stream seeded from the
;; input digest: the same input always gives the same output, a different
;; input (almost surely) a different "random". A determinism fixture.
;;
;; Errors (status 1): "wasi_abi: random_get failed", "wasi_abi:
;; clock_time_get failed" when the host returns a non-zero errno.
(module
  ;; random_get(buf, buf_len) -> errno
  (import "wasi_snapshot_preview1" "random_get"
    (func $random_get (param i32 i32) (result i32)))
  ;; clock_time_get(clock_id, precision, result_ptr) -> errno
  (import "wasi_snapshot_preview1" "clock_time_get"
    (func $clock_time_get (param i32 i64 i32) (result i32)))

  (memory (export "memory") 1)

  (data (i32.const 0) "{\"random\":\"")                     ;; 11 bytes
  (data (i32.const 16) "\",\"time\":\"")                    ;; 10 bytes
  (data (i32.const 32) "0123456789abcdef")                  ;; 16 bytes
  (data (i32.const 64) "wasi_abi: random_get failed")       ;; 27 bytes
  (data (i32.const 96) "wasi_abi: clock_time_get failed")   ;; 31 bytes
  ;; 512..519: random bytes; 520..527: the clock reading;
  ;; 1000..1023: scratch space for formatting a decimal number.

  (global $heap (mut i32) (i32.const 1024))
  (global $out_ptr (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))

  ;; Bump allocator, as in echo.wat: 8-byte aligned, grows memory on demand,
  ;; traps when memory cannot grow.
  (func $alloc (export "wg_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local $end i32)
    (local $pages i32)
    (local.set $ptr (global.get $heap))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (if (i32.lt_u (local.get $end) (local.get $ptr))
      (then unreachable))
    (local.set $pages
      (i32.add (i32.shr_u (local.get $end) (i32.const 16))
               (i32.ne (i32.and (local.get $end) (i32.const 0xffff)) (i32.const 0))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size)))
                    (i32.const -1))
          (then unreachable))))
    (global.set $heap
      (i32.and (i32.add (local.get $end) (i32.const 7)) (i32.const -8)))
    (local.get $ptr))

  (func (export "wg_output_ptr") (result i32) (global.get $out_ptr))
  (func (export "wg_output_len") (result i32) (global.get $out_len))


  (func $fail (param $msg i32) (param $len i32) (result i32)
    (global.set $out_ptr (local.get $msg))
    (global.set $out_len (local.get $len))
    (i32.const 1))

  ;; $write_u64 writes $v in unsigned decimal at $dst and returns the end.
  (func $write_u64 (param $dst i32) (param $v i64) (result i32)
    (local $p i32)
    (local.set $p (i32.const 1024))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 0x30)
                 (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digit (i64.ne (local.get $v) (i64.const 0))))
    (block $done
      (loop $copy
        (br_if $done (i32.eq (local.get $p) (i32.const 1024)))
        (i32.store8 (local.get $dst) (i32.load8_u (local.get $p)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 1)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $copy)))
    (local.get $dst))

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (local $out i32)
    (local $o i32)
    (local $i i32)
    (local $b i32)
    (if (call $random_get (i32.const 512) (i32.const 8))
      (then (return (call $fail (i32.const 64) (i32.const 27)))))
    ;; Clock 0 is CLOCK_REALTIME; precision 1 ns.
    (if (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 520))
      (then (return (call $fail (i32.const 96) (i32.const 31)))))

    ;; 11 + 16 + 10 + at most 20 digits + 2 = 59 bytes.
    (local.set $out (call $alloc (i32.const 64)))
    (i64.store (local.get $out) (i64.load (i32.const 0)))                ;; {"random
    (i32.store (i32.add (local.get $out) (i32.const 8))                  ;; ":"
               (i32.load (i32.const 8)))
    (local.set $o (i32.add (local.get $out) (i32.const 11)))
    ;; Each random byte as two lowercase hex digits.
    (loop $hex
      (local.set $b (i32.load8_u (i32.add (i32.const 512) (local.get $i))))
      (i32.store8 (local.get $o)
        (i32.load8_u (i32.add (i32.const 32) (i32.shr_u (local.get $b) (i32.const 4)))))
      (i32.store8 (i32.add (local.get $o) (i32.const 1))
        (i32.load8_u (i32.add (i32.const 32) (i32.and (local.get $b) (i32.const 15)))))
      (local.set $o (i32.add (local.get $o) (i32.const 2)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $hex (i32.lt_u (local.get $i) (i32.const 8))))
    (i64.store (local.get $o) (i64.load (i32.const 16)))                 ;; ","time"
    (i32.store16 (i32.add (local.get $o) (i32.const 8))                  ;; :"
                 (i32.load16_u (i32.const 24)))
    (local.set $o (call $write_u64 (i32.add (local.get $o) (i32.const 10))
                                   (i64.load (i32.const 520))))
    (i32.store16 (local.get $o) (i32.const 0x7d22))                      ;; "}
    (global.set $out_ptr (local.get $out))
    (global.set $out_len (i32.sub (i32.add (local.get $o) (i32.const 2)) (local.get $out)))
    (i32.const 0))
)
