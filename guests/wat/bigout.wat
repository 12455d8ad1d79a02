;; bigout: succeeds with about 1 MiB of output (Guest ABI v1, strict profile).
;;
;; The output is one valid JSON string: a quote, 1 MiB (1048576) of "x", a
;; quote: 1048578 bytes. It is generated at run time, so the module stays
;; small; wg_alloc grows memory to 17 pages to hold it.
;; Expected outcome: BLOCKED, LIMIT_EXCEEDED + OUTPUT_TOO_LARGE under any
;; max_output_bytes below 1048578 (the manifest says 65536).
(module
  (memory (export "memory") 1)

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

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (local $out i32)
    (local $p i32)
    (local $stop i32)
    (local.set $out (call $alloc (i32.const 1048578)))
    (i32.store8 (local.get $out) (i32.const 0x22))                     ;; opening quote
    ;; Fill the 1 MiB body eight bytes at a time.
    (local.set $p (i32.add (local.get $out) (i32.const 1)))
    (local.set $stop (i32.add (local.get $p) (i32.const 1048576)))
    (loop $fill
      (i64.store (local.get $p) (i64.const 0x7878787878787878))       ;; "xxxxxxxx"
      (local.set $p (i32.add (local.get $p) (i32.const 8)))
      (br_if $fill (i32.lt_u (local.get $p) (local.get $stop))))
    (i32.store8 (local.get $stop) (i32.const 0x22))                    ;; closing quote
    (global.set $out_ptr (local.get $out))
    (global.set $out_len (i32.const 1048578))
    (i32.const 0))
)
