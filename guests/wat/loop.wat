;; loop: wg_execute never returns (Guest ABI v1, strict profile).
;;
;; The loop has no calls and no memory access: the cheapest possible basic
;; block, repeated forever. Fuel instrumentation charges it on every
;; iteration; without fuel only the wall-clock timeout stops it.
;; Expected outcome: BLOCKED, LIMIT_EXCEEDED + FUEL_EXHAUSTED when fuel is
;; metered, otherwise BLOCKED, EXECUTOR_TIMEOUT.
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
    (loop $forever
      (br $forever))
    unreachable)
)
