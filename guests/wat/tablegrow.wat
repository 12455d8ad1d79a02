;; tablegrow: tries to take unbounded host memory through table.grow
;; (Guest ABI v1, strict profile).
;;
;; The table declares no maximum, so by the spec it may grow to 2^32-1
;; elements: 32 GiB of host memory in wazero. wasmgate charges tables to
;; memory_pages (32 bytes an element, beside the memory), and caps every
;; table at runtime.MaxTableElements (2^20) besides, so table.grow fails (-1)
;; at whichever comes first, and this guest reports how far it got.
;; Expected outcome: SUCCESS with {"elements":30720} under the manifest's 16
;; pages (15 of them left by the memory, at 32 bytes an element);
;; {"elements":1048576}, the cap, from 513 pages up.
(module
  (memory (export "memory") 1)
  (table $t 1 funcref)

  (global $out_len (mut i32) (i32.const 0))

  (func (export "wg_alloc") (param $len i32) (result i32) (i32.const 1024))
  (func (export "wg_output_ptr") (result i32) (i32.const 0))
  (func (export "wg_output_len") (result i32) (global.get $out_len))

  ;; Writes the decimal digits of $n at $at, returns the address after them.
  (func $digits (param $n i32) (param $at i32) (result i32)
    (local $div i32)
    (local $len i32)
    (local $i i32)
    ;; Count the digits.
    (local.set $div (local.get $n))
    (local.set $len (i32.const 1))
    (block $done
      (loop $count
        (local.set $div (i32.div_u (local.get $div) (i32.const 10)))
        (br_if $done (i32.eqz (local.get $div)))
        (local.set $len (i32.add (local.get $len) (i32.const 1)))
        (br $count)))
    ;; Write them from the last one backwards.
    (local.set $i (local.get $len))
    (loop $write
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (i32.store8 (i32.add (local.get $at) (local.get $i))
        (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $write (local.get $i)))
    (i32.add (local.get $at) (local.get $len)))

  (data (i32.const 0) "{\22elements\22:")

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (local $end i32)
    ;; Grow by a million elements at a time until the table refuses.
    (block $refused
      (loop $grow
        (br_if $refused
          (i32.eq (table.grow $t (ref.null func) (i32.const 1000000)) (i32.const -1)))
        (br $grow)))
    ;; One element at a time, to find the exact ceiling.
    (block $full
      (loop $inch
        (br_if $full
          (i32.eq (table.grow $t (ref.null func) (i32.const 1)) (i32.const -1)))
        (br $inch)))
    (local.set $end (call $digits (table.size $t) (i32.const 12)))
    (i32.store8 (local.get $end) (i32.const 125)) ;; "}"
    (global.set $out_len (i32.add (i32.sub (local.get $end) (i32.const 0)) (i32.const 1)))
    (i32.const 0))
)
