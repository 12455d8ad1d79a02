;; upper: {"text":"abc"} -> {"text":"ABC"} (Guest ABI v1, strict profile).
;;
;; ASCII letters a-z become A-Z; every other byte, including UTF-8 sequences,
;; is copied unchanged. JSON escapes are copied verbatim: the letter after a
;; backslash and the four hex digits of \uXXXX are not uppercased, because
;; "\n" -> "\N" or "\u00e9" -> "\U00E9" would break the JSON. Other fields of
;; the input object are ignored.
;;
;; Errors (status 1, the output is the message):
;;   input is not an object, field "text" missing, field "text" not a string.
;;
;; The host guarantees canonical JSON input (RFC 8785: no whitespace, keys
;; sorted), so the parser needs no whitespace handling. It still never reads
;; past the end of the input, whatever the bytes are.
(module
  (memory (export "memory") 1)

  ;; Static data lives below 1024; the heap starts there.
  (data (i32.const 0) "text")                                   ;; 4 bytes
  (data (i32.const 8) "{\"text\":")                             ;; 8 bytes
  (data (i32.const 32) "upper: input is not a JSON object")     ;; 33 bytes
  (data (i32.const 96) "upper: missing field \"text\"")         ;; 27 bytes
  (data (i32.const 160) "upper: field \"text\" must be a string") ;; 36 bytes

  (global $heap (mut i32) (i32.const 1024))
  (global $out_ptr (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))
  ;; One past the last input byte, set by wg_execute.
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

  ;; $fail makes a static message the output and returns status 1.
  (func $fail (param $msg i32) (param $len i32) (result i32)
    (global.set $out_ptr (local.get $msg))
    (global.set $out_len (local.get $len))
    (i32.const 1))

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
    (local $v i32)     ;; the opening quote of the "text" value
    (local $q i32)     ;; just after its closing quote
    (local $out i32)
    (local $o i32)     ;; output write position
    (local $i i32)     ;; input read position
    (local $c i32)
    (local $verbatim i32) ;; bytes still to copy unchanged (inside an escape)
    (global.set $end (i32.add (local.get $ptr) (local.get $len)))

    (local.set $v (call $find_field (local.get $ptr) (i32.const 0) (i32.const 4)))
    (if (i32.eq (local.get $v) (i32.const -2))
      (then (return (call $fail (i32.const 32) (i32.const 33)))))
    (if (i32.eq (local.get $v) (i32.const -1))
      (then (return (call $fail (i32.const 96) (i32.const 27)))))
    (if (i32.ne (call $byte (local.get $v)) (i32.const 0x22))
      (then (return (call $fail (i32.const 160) (i32.const 36)))))
    (local.set $q (call $skip_string (local.get $v)))
    (if (i32.eq (local.get $q) (i32.const -1))
      (then (return (call $fail (i32.const 32) (i32.const 33)))))

    ;; Output: {"text": + the transformed string with its quotes + }
    (local.set $out (call $alloc (i32.add (i32.sub (local.get $q) (local.get $v))
                                          (i32.const 16))))
    (i64.store (local.get $out) (i64.load (i32.const 8)))         ;; {"text":
    (local.set $o (i32.add (local.get $out) (i32.const 8)))
    (local.set $i (local.get $v))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $q)))
        (local.set $c (i32.load8_u (local.get $i)))
        (if (local.get $verbatim)
          (then
            (local.set $verbatim (i32.sub (local.get $verbatim) (i32.const 1))))
          (else
            (if (i32.eq (local.get $c) (i32.const 0x5c))          ;; '\'
              (then
                ;; \uXXXX: the u and four hex digits; otherwise one letter.
                ;; skip_string guaranteed a byte after the backslash.
                (local.set $verbatim
                  (select (i32.const 5) (i32.const 1)
                          (i32.eq (i32.load8_u (i32.add (local.get $i) (i32.const 1)))
                                  (i32.const 0x75)))))                ;; 'u'
              (else
                ;; 'a' <= c <= 'z', as one unsigned comparison.
                (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x61)) (i32.const 26))
                  (then (local.set $c (i32.sub (local.get $c) (i32.const 0x20)))))))))
        (i32.store8 (local.get $o) (local.get $c))
        (local.set $o (i32.add (local.get $o) (i32.const 1)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.store8 (local.get $o) (i32.const 0x7d))                  ;; '}'
    (local.set $o (i32.add (local.get $o) (i32.const 1)))

    (global.set $out_ptr (local.get $out))
    (global.set $out_len (i32.sub (local.get $o) (local.get $out)))
    (i32.const 0))
)
