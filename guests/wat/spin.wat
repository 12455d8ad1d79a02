;; spin: the tightest loop there is, a fixed number of times
;; (Guest ABI v1, strict profile).
;;
;; Input {"n":N}: wg_execute runs N iterations of a two-instruction loop body
;; (a counter and an accumulator) and returns {"acc":A} — a benchmark for the
;; cost of fuel metering and of the wall-clock stop on a tight loop, where
;; that cost is at its largest relative to the work.
(module
  (memory (export "memory") 1)
  (global $out_len (mut i32) (i32.const 0))

  (func (export "wg_alloc") (param $len i32) (result i32) (i32.const 1024))
  (func (export "wg_output_ptr") (result i32) (i32.const 0))
  (func (export "wg_output_len") (result i32) (global.get $out_len))

  (data (i32.const 0) "{\22acc\22:")

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (local $i i32)
    (local $end i32)
    (local $n i64)
    (local $acc i64)
    (local $c i32)
    (local $at i32)
    ;; Parse the digits after {"n": (canonical input, so the digits start
    ;; at offset 5).
    (local.set $i (i32.add (local.get $ptr) (i32.const 5)))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (block $digits_done
      (loop $digits
        (br_if $digits_done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $i)))
        (br_if $digits_done (i32.lt_u (local.get $c) (i32.const 48)))
        (br_if $digits_done (i32.gt_u (local.get $c) (i32.const 57)))
        (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 10))
                               (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $digits)))

    ;; The loop under test.
    (block $done
      (loop $spin
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $acc (i64.add (i64.xor (local.get $acc) (local.get $n)) (i64.const 3)))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $spin)))

    ;; Output {"acc":A} with A in decimal, below 2^53 so it stays JSON.
    (local.set $acc (i64.and (local.get $acc) (i64.const 0xfffffffffff)))
    (local.set $at (i32.const 26))
    (loop $write
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i64.store8 (local.get $at) (i64.add (i64.const 48) (i64.rem_u (local.get $acc) (i64.const 10))))
      (local.set $acc (i64.div_u (local.get $acc) (i64.const 10)))
      (br_if $write (i64.ne (local.get $acc) (i64.const 0))))
    ;; Move the digits next to the prefix and close the object.
    (memory.copy (i32.const 7) (local.get $at) (i32.sub (i32.const 26) (local.get $at)))
    (local.set $at (i32.add (i32.const 7) (i32.sub (i32.const 26) (local.get $at))))
    (i32.store8 (local.get $at) (i32.const 125))
    (global.set $out_len (i32.add (local.get $at) (i32.const 1)))
    (i32.const 0))
)
