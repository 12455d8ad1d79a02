;; stash: an executor that keeps state between calls if its instance is
;; reused without being reset, and says so (Guest ABI v1, strict profile).
;;
;; Every call bumps a mutable global that is not exported ($calls), a
;; counter in linear memory (at 512), and the bump allocator's heap pointer;
;; it answers {"fresh":true} only when all three show a first call.
;; The host starts every execution from a fresh instance, or from one
;; returned to a state bit-for-bit equal to a fresh one (runtime's
;; recycling), so the answer is always {"fresh":true}; a recycled instance
;; that leaked state would answer {"fresh":false}.
(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (global $calls (mut i32) (i32.const 0))
  (global $out_ptr (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))
  (data (i32.const 0) "{\"fresh\":true}")
  (data (i32.const 32) "{\"fresh\":false}")

  (func (export "wg_alloc") (param $len i32) (result i32)
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

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.store (i32.const 512) (i32.add (i32.load (i32.const 512)) (i32.const 1)))
    (if (i32.and
          (i32.and (i32.eq (global.get $calls) (i32.const 1))
                   (i32.eq (i32.load (i32.const 512)) (i32.const 1)))
          (i32.eq (local.get $ptr) (i32.const 1024)))
      (then
        (global.set $out_ptr (i32.const 0))
        (global.set $out_len (i32.const 14)))
      (else
        (global.set $out_ptr (i32.const 32))
        (global.set $out_len (i32.const 15))))
    (i32.const 0))

  (func (export "wg_output_ptr") (result i32) (global.get $out_ptr))
  (func (export "wg_output_len") (result i32) (global.get $out_len))
)
