;; echo: the smallest complete wasmgate executor (Guest ABI v1, strict profile).
;;
;; Output = input: the host's canonical JSON comes back unchanged, so the
;; output digest equals the input digest.
;;
;; The module imports nothing, so wasmgate runs it under the strict profile.
;; It exports the five names of ABI v1. For every call the host
;;   1. instantiates the module afresh,
;;   2. calls wg_alloc(len) and writes the canonical JSON input at the result,
;;   3. calls wg_execute(ptr, len): 0 = ok, 1 = executor error,
;;   4. reads wg_output_len() bytes at wg_output_ptr(): the output JSON
;;      (empty = no output) or, after status 1, a UTF-8 error message.
(module
  ;; One 64 KiB page to start; wg_alloc grows it on demand. No maximum is
  ;; declared: the host's memory_pages limit caps growth.
  (memory (export "memory") 1)

  ;; Bump allocator. Addresses below 1024 are left free for static data (this
  ;; module has none, the others keep their messages there). Nothing is ever
  ;; freed: the instance lives for one call only.
  (global $heap (mut i32) (i32.const 1024))

  ;; Where wg_output_ptr/wg_output_len point after wg_execute.
  (global $out_ptr (mut i32) (i32.const 0))
  (global $out_len (mut i32) (i32.const 0))

  ;; wg_alloc returns len bytes of fresh memory, 8-byte aligned, growing the
  ;; memory when needed. It traps when memory cannot grow (the host reports
  ;; MEMORY_EXHAUSTED).
  (func (export "wg_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local $end i32)
    (local $pages i32)
    (local.set $ptr (global.get $heap))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    ;; A length that wraps around the 32-bit address space is a host bug.
    (if (i32.lt_u (local.get $end) (local.get $ptr))
      (then unreachable))
    ;; Pages needed to hold [0, end), rounded up.
    (local.set $pages
      (i32.add (i32.shr_u (local.get $end) (i32.const 16))
               (i32.ne (i32.and (local.get $end) (i32.const 0xffff)) (i32.const 0))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size)))
                    (i32.const -1))
          (then unreachable))))
    ;; Keep the next allocation 8-byte aligned.
    (global.set $heap
      (i32.and (i32.add (local.get $end) (i32.const 7)) (i32.const -8)))
    (local.get $ptr))

  ;; wg_execute points the output at the input itself: no copy is needed,
  ;; since the host reads the output before the instance is discarded.
  (func (export "wg_execute") (param $ptr i32) (param $len i32) (result i32)
    (global.set $out_ptr (local.get $ptr))
    (global.set $out_len (local.get $len))
    (i32.const 0))

  (func (export "wg_output_ptr") (result i32) (global.get $out_ptr))
  (func (export "wg_output_len") (result i32) (global.get $out_len))
)
