;; sum: {"numbers":[1,-2,3]} -> {"sum":2} (Guest ABI v1, strict profile).
;;
;; Integers are added as i64. Every element must be a JSON integer (an
;; optional minus sign and digits: no fraction, no exponent); canonical JSON
;; writes integral numbers that way. Other fields of the input are ignored.
;;
;; Errors (status 1, the output is the message):
;;   input is not an object; field "numbers" missing or not an array;
;;   "sum: numbers[I] is not an integer"; "sum: numbers[I] is out of range"
;;   (more than 18 digits); "sum: overflow" (the i64 sum overflows);
;;   "sum: the sum is beyond +-2^53" (canonical JSON has no such integers,
;;   so the host would reject the output as not JSON).
;;
;; The parsing helpers are the same as in upper.wat; like it, this module
;; relies on canonical input (no whitespace) and never reads past its end.
(module
  (memory (export "memory") 1)

  (data (i32.const 0) "numbers")                                  ;; 7 bytes
  (data (i32.const 16) "{\"sum\":")                               ;; 7 bytes
  (data (i32.const 32) "sum: input is not a JSON object")         ;; 31 bytes
  (data (i32.const 96) "sum: missing field \"numbers\"")          ;; 28 bytes
  (data (i32.const 160) "sum: field \"numbers\" must be an array") ;; 37 bytes
  (data (i32.const 224) "sum: numbers[")                          ;; 13 bytes
  (data (i32.const 256) "] is not an integer")                    ;; 19 bytes
  (data (i32.const 288) "] is out of range")                      ;; 17 bytes
  (data (i32.const 320) "sum: overflow")                          ;; 13 bytes
  (data (i32.const 352) "sum: the sum is beyond +-2^53")          ;; 29 bytes
  ;; 1000..1023: scratch space for formatting a decimal number.

  (global $heap (mut i32) (i32.const 1024))
  (global $out_ptr (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))
  (global $end (mut i32) (i32.const 0))

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

  ;; $copy copies $n bytes from $src to $dst and returns $dst + $n.
  (func $copy (param $dst i32) (param $src i32) (param $n i32) (result i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $n)))
        (i32.store8 (local.get $dst) (i32.load8_u (local.get $src)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 1)))
        (local.set $src (i32.add (local.get $src) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $dst))

  ;; $write_i64 writes $v in decimal at $dst and returns the end. The digits
  ;; are produced backwards into the scratch space, from the unsigned
  ;; magnitude, so that -9223372036854775808 prints correctly too.
  (func $write_i64 (param $dst i32) (param $v i64) (result i32)
    (local $p i32)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then
        (i32.store8 (local.get $dst) (i32.const 0x2d))               ;; '-'
        (local.set $dst (i32.add (local.get $dst) (i32.const 1)))
        (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $p (i32.const 1024))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 0x30)
                 (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digit (i64.ne (local.get $v) (i64.const 0))))
    (call $copy (local.get $dst) (local.get $p)
                (i32.sub (i32.const 1024) (local.get $p))))

  ;; $fail_at builds "sum: numbers[<index>" + suffix on the heap and
  ;; returns status 1.
  (func $fail_at (param $index i32) (param $suffix i32) (param $suffix_len i32) (result i32)
    (local $msg i32)
    (local $o i32)
    (local.set $msg (call $alloc (i32.const 64)))
    (local.set $o (call $copy (local.get $msg) (i32.const 224) (i32.const 13)))
    (local.set $o (call $write_i64 (local.get $o) (i64.extend_i32_u (local.get $index))))
    (local.set $o (call $copy (local.get $o) (local.get $suffix) (local.get $suffix_len)))
    (call $fail (local.get $msg) (i32.sub (local.get $o) (local.get $msg))))

  ;; $byte is the input byte at $p, or -1 at or past the end of the input.
  (func $byte (param $p i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $p) (global.get $end))
      (then (i32.load8_u (local.get $p)))
      (else (i32.const -1))))

  ;; $skip_string: $p is at an opening quote. Returns the position just after
  ;; the closing quote, or -1 if the string is not terminated.
  (func $skip_string (param $p i32) (result i32)
    (local $c i32)
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (loop $next
      (local.set $c (call $byte (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const -1))
        (then (return (i32.const -1))))
      (if (i32.eq (local.get $c) (i32.const 0x22))            ;; '"'
        (then (return (i32.add (local.get $p) (i32.const 1)))))
      ;; A backslash escapes the next byte; the hex digits of \uXXXX can be
      ;; neither quotes nor backslashes, so skipping one byte is enough.
      (local.set $p
        (i32.add (local.get $p)
                 (select (i32.const 2) (i32.const 1)
                         (i32.eq (local.get $c) (i32.const 0x5c)))))   ;; '\'
      (br $next))
    unreachable)

  ;; $skip_value: $p is at the first byte of any JSON value. Returns the
  ;; position just after it, or -1 if it is malformed or truncated.
  (func $skip_value (param $p i32) (result i32)
    (local $c i32)
    (local $depth i32)
    (local $start i32)
    (local.set $c (call $byte (local.get $p)))
    (if (i32.eq (local.get $c) (i32.const 0x22))              ;; string
      (then (return (call $skip_string (local.get $p)))))
    (if (i32.or (i32.eq (local.get $c) (i32.const 0x7b))      ;; '{'
                (i32.eq (local.get $c) (i32.const 0x5b)))     ;; '['
      (then
        ;; Count brackets until the matching close, stepping over strings
        ;; whole since they may contain brackets.
        (loop $next
          (local.set $c (call $byte (local.get $p)))
          (if (i32.eq (local.get $c) (i32.const -1))
            (then (return (i32.const -1))))
          (if (i32.eq (local.get $c) (i32.const 0x22))
            (then
              (local.set $p (call $skip_string (local.get $p)))
              (if (i32.eq (local.get $p) (i32.const -1))
                (then (return (i32.const -1))))
              (br $next)))
          (if (i32.or (i32.eq (local.get $c) (i32.const 0x7b))
                      (i32.eq (local.get $c) (i32.const 0x5b)))
            (then (local.set $depth (i32.add (local.get $depth) (i32.const 1)))))
          (if (i32.or (i32.eq (local.get $c) (i32.const 0x7d))   ;; '}'
                      (i32.eq (local.get $c) (i32.const 0x5d)))  ;; ']'
            (then
              (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
              (if (i32.eqz (local.get $depth))
                (then (return (i32.add (local.get $p) (i32.const 1)))))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $next))))
    ;; A number, true, false or null: runs up to the next delimiter.
    (local.set $start (local.get $p))
    (block $done
      (loop $next
        (local.set $c (call $byte (local.get $p)))
        (br_if $done (i32.eq (local.get $c) (i32.const -1)))
        (br_if $done (i32.eq (local.get $c) (i32.const 0x2c)))   ;; ','
        (br_if $done (i32.eq (local.get $c) (i32.const 0x7d)))   ;; '}'
        (br_if $done (i32.eq (local.get $c) (i32.const 0x5d)))   ;; ']'
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next)))
    (if (result i32) (i32.eq (local.get $p) (local.get $start))
      (then (i32.const -1))
      (else (local.get $p))))

  ;; $equal compares $n bytes at $a and $b.
  (func $equal (param $a i32) (param $b i32) (param $n i32) (result i32)
    (block $differ
      (loop $next
        (if (i32.eqz (local.get $n))
          (then (return (i32.const 1))))
        (br_if $differ (i32.ne (i32.load8_u (local.get $a))
                               (i32.load8_u (local.get $b))))
        (local.set $a (i32.add (local.get $a) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.const 0))

  ;; $find_field: $p is at the start of the input. Returns the position of
  ;; the value of top-level key [$key, $key+$key_len), -1 when the object has
  ;; no such key, -2 when the input is not a well-formed object.
  (func $find_field (param $p i32) (param $key i32) (param $key_len i32) (result i32)
    (local $q i32)
    (local $c i32)
    (if (i32.ne (call $byte (local.get $p)) (i32.const 0x7b))      ;; '{'
      (then (return (i32.const -2))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (if (i32.eq (call $byte (local.get $p)) (i32.const 0x7d))      ;; '{}'
      (then (return (i32.const -1))))
    (loop $member
      ;; "key":value
      (if (i32.ne (call $byte (local.get $p)) (i32.const 0x22))
        (then (return (i32.const -2))))
      (local.set $q (call $skip_string (local.get $p)))
      (if (i32.eq (local.get $q) (i32.const -1))
        (then (return (i32.const -2))))
      (if (i32.ne (call $byte (local.get $q)) (i32.const 0x3a))    ;; ':'
        (then (return (i32.const -2))))
      ;; The key's bytes are those between the quotes: [p+1, q-1).
      (if (i32.and
            (i32.eq (i32.sub (i32.sub (local.get $q) (local.get $p)) (i32.const 2))
                    (local.get $key_len))
            (call $equal (i32.add (local.get $p) (i32.const 1))
                         (local.get $key) (local.get $key_len)))
        (then (return (i32.add (local.get $q) (i32.const 1)))))
      (local.set $p (call $skip_value (i32.add (local.get $q) (i32.const 1))))
      (if (i32.eq (local.get $p) (i32.const -1))
        (then (return (i32.const -2))))
      (local.set $c (call $byte (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x2c))                 ;; ','
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $member)))
      (if (i32.eq (local.get $c) (i32.const 0x7d))                 ;; '}'
        (then (return (i32.const -1)))))
    (i32.const -2))

  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (local $p i32)
    (local $c i32)
    (local $index i32)   ;; of the element being parsed
    (local $neg i32)
    (local $digits i32)
    (local $n i64)       ;; the element
    (local $sum i64)
    (local $r i64)
    (local $out i32)
    (local $o i32)
    (global.set $end (i32.add (local.get $ptr) (local.get $len)))

    (local.set $p (call $find_field (local.get $ptr) (i32.const 0) (i32.const 7)))
    (if (i32.eq (local.get $p) (i32.const -2))
      (then (return (call $fail (i32.const 32) (i32.const 31)))))
    (if (i32.eq (local.get $p) (i32.const -1))
      (then (return (call $fail (i32.const 96) (i32.const 28)))))
    (if (i32.ne (call $byte (local.get $p)) (i32.const 0x5b))       ;; '['
      (then (return (call $fail (i32.const 160) (i32.const 37)))))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))

    ;; An empty array sums to 0; otherwise parse "int,int,...,int]".
    (if (i32.ne (call $byte (local.get $p)) (i32.const 0x5d))       ;; ']'
      (then
        (loop $element
          (local.set $neg (i32.eq (call $byte (local.get $p)) (i32.const 0x2d)))  ;; '-'
          (local.set $p (i32.add (local.get $p) (local.get $neg)))
          (local.set $digits (i32.const 0))
          (local.set $n (i64.const 0))
          (block $end_digits
            (loop $digit
              (local.set $c (i32.sub (call $byte (local.get $p)) (i32.const 0x30)))
              ;; '0' <= byte <= '9', as one unsigned comparison (-1 fails too).
              (br_if $end_digits (i32.ge_u (local.get $c) (i32.const 10)))
              ;; 18 digits always fit in an i64; canonical JSON never has more
              ;; than 16 (integers are within +-2^53).
              (if (i32.eq (local.get $digits) (i32.const 18))
                (then (return (call $fail_at (local.get $index) (i32.const 288) (i32.const 17)))))
              (local.set $n (i64.add (i64.mul (local.get $n) (i64.const 10))
                                     (i64.extend_i32_u (local.get $c))))
              (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
              (local.set $p (i32.add (local.get $p) (i32.const 1)))
              (br $digit)))
          ;; An integer is at least one digit followed by ',' or ']': this
          ;; rejects 1.5, 1e+21, "1", null, true, [1], {}.
          (local.set $c (call $byte (local.get $p)))
          (if (i32.or (i32.eqz (local.get $digits))
                      (i32.and (i32.ne (local.get $c) (i32.const 0x2c))
                               (i32.ne (local.get $c) (i32.const 0x5d))))
            (then (return (call $fail_at (local.get $index) (i32.const 256) (i32.const 19)))))
          (if (local.get $neg)
            (then (local.set $n (i64.sub (i64.const 0) (local.get $n)))))
          ;; Signed overflow happened iff the result's sign differs from both
          ;; operands' signs.
          (local.set $r (i64.add (local.get $sum) (local.get $n)))
          (if (i64.lt_s (i64.and (i64.xor (local.get $sum) (local.get $r))
                                 (i64.xor (local.get $n) (local.get $r)))
                        (i64.const 0))
            (then (return (call $fail (i32.const 320) (i32.const 13)))))
          (local.set $sum (local.get $r))
          (local.set $index (i32.add (local.get $index) (i32.const 1)))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))       ;; past ',' or ']'
          (br_if $element (i32.eq (local.get $c) (i32.const 0x2c))))))

    ;; |sum| <= 2^53, as one unsigned comparison: sum + 2^53 <= 2^54.
    (if (i64.gt_u (i64.add (local.get $sum) (i64.const 0x20000000000000))
                  (i64.const 0x40000000000000))
      (then (return (call $fail (i32.const 352) (i32.const 29)))))

    ;; {"sum":N}
    (local.set $out (call $alloc (i32.const 32)))
    (local.set $o (call $copy (local.get $out) (i32.const 16) (i32.const 7)))
    (local.set $o (call $write_i64 (local.get $o) (local.get $sum)))
    (i32.store8 (local.get $o) (i32.const 0x7d))                    ;; '}'
    (global.set $out_ptr (local.get $out))
    (global.set $out_len (i32.sub (i32.add (local.get $o) (i32.const 1)) (local.get $out)))
    (i32.const 0))
)
