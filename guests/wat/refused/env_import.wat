;; REFUSED at admission: imports a function from module "env".
;;
;; Otherwise a complete ABI v1 echo executor. Only wasi_snapshot_preview1
;; imports are allowed (plus env.host_* for the QuickJS engine alone), so
;; "env"."abort" (what AssemblyScript modules import by default) must keep
;; this module from being admitted, before anything runs.
(module
  ;; abort(message, file, line, column): never called.
  (import "env" "abort" (func $abort (param i32 i32 i32 i32)))

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
    (global.set $out_ptr (local.get $ptr))
    (global.set $out_len (local.get $len))
    (i32.const 0))
)
