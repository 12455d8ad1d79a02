;; state: an executor that writes every kind of state an instance holds and
;; outputs what it found before writing it (Guest ABI v1, strict profile).
;;
;; The state: a mutable global of every value type (i32, i64, f32, f64,
;; v128, funcref, externref) and linear memory (a counter at 512, the last
;; byte of the page). Each starts from a value a careless reset would not
;; restore: v128's high half is not zero, the funcref is not null. Each
;; execution outputs the state as it found it, as hex bytes:
;;
;;   {"state":"<i32><i64><f32><f64><v128><funcref null?><externref null?><counter><last byte>"}
;;
;; (numbers little-endian; the two null flags one byte each, 1 = null), then
;; changes every piece of it: the numbers and both halves of the v128 go up,
;; the funcref becomes null, the externref is written (null: no host ever
;; gives a guest another externref), the counter and the last byte go up.
;; A fresh instance, or one reset bit for bit, always answers the initial
;; state:
;;
;;   {"state":"443322110807060504030201 0000c03f 000000000000 02c0 0100f0debc9a7856 3412f0debc9a7856 00 01 00000000 00"}
;;
;; (without the spaces). Any other answer shows what an earlier execution
;; left behind.
(module
  (memory (export "memory") 1)

  (global $i32 (mut i32) (i32.const 0x11223344))
  (global $i64 (mut i64) (i64.const 0x0102030405060708))
  (global $f32 (mut f32) (f32.const 1.5))
  (global $f64 (mut f64) (f64.const -2.25))
  (global $v128 (mut v128) (v128.const i64x2 0x56789abcdef00001 0x56789abcdef01234))
  (global $funcref (mut funcref) (ref.func $marker))
  (global $externref (mut externref) (ref.null extern))

  ;; The hex digits, and the output's constant parts around the hex.
  (data (i32.const 0) "0123456789abcdef")
  (data (i32.const 1024) "{\"state\":\"")
  (data (i32.const 1128) "\"}")

  ;; The state as found is gathered at 256 (47 bytes), then written as hex
  ;; at 1034, between the output's constant parts.
  (func $marker)

  (func (export "wg_alloc") (param $len i32) (result i32)
    ;; The input goes at 2048 and is not read; the page holds 30 KiB of it.
    (if (i32.gt_u (local.get $len) (i32.const 30720))
      (then unreachable))
    (i32.const 2048))

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    ;; Gather the state as found.
    (i32.store (i32.const 256) (global.get $i32))
    (i64.store (i32.const 260) (global.get $i64))
    (f32.store (i32.const 268) (global.get $f32))
    (f64.store (i32.const 272) (global.get $f64))
    (v128.store (i32.const 280) (global.get $v128))
    (i32.store8 (i32.const 296) (ref.is_null (global.get $funcref)))
    (i32.store8 (i32.const 297) (ref.is_null (global.get $externref)))
    (i32.store (i32.const 298) (i32.load (i32.const 512)))
    (i32.store8 (i32.const 302) (i32.load8_u (i32.const 65535)))
    (call $hex (i32.const 256) (i32.const 47) (i32.const 1034))

    ;; Change all of it.
    (global.set $i32 (i32.add (global.get $i32) (i32.const 1)))
    (global.set $i64 (i64.add (global.get $i64) (i64.const 1)))
    (global.set $f32 (f32.add (global.get $f32) (f32.const 1)))
    (global.set $f64 (f64.mul (global.get $f64) (f64.const 2)))
    (global.set $v128 (i64x2.add (global.get $v128) (v128.const i64x2 1 1)))
    (global.set $funcref (ref.null func))
    (global.set $externref (ref.null extern))
    (i32.store (i32.const 512) (i32.add (i32.load (i32.const 512)) (i32.const 1)))
    (i32.store8 (i32.const 65535) (i32.add (i32.load8_u (i32.const 65535)) (i32.const 1)))
    (i32.const 0))

  ;; Writes the $n bytes at $src as 2*$n hex digits at $dst.
  (func $hex (param $src i32) (param $n i32) (param $dst i32)
    (local $b i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $b (i32.load8_u (local.get $src)))
        (i32.store8 (local.get $dst) (i32.load8_u (i32.shr_u (local.get $b) (i32.const 4))))
        (i32.store8 offset=1 (local.get $dst) (i32.load8_u (i32.and (local.get $b) (i32.const 15))))
        (local.set $src (i32.add (local.get $src) (i32.const 1)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next))))

  (func (export "wg_output_ptr") (result i32) (i32.const 1024))
  (func (export "wg_output_len") (result i32) (i32.const 106))
)
