;; startloop: never finishes instantiating (strict profile, ABI v1 exports).
;;
;; Its start function runs while the instance is created, before the host
;; calls anything, and loops forever: limits must cover instantiation too.
;; Expected outcome: BLOCKED, EXECUTOR_TIMEOUT (or FUEL_EXHAUSTED once fuel
;; is metered).
(module
  (memory (export "memory") 1)
  (func $spin
    (loop $forever
      (br $forever)))
  (start $spin)
  (func (export "wg_alloc") (param i32) (result i32) (i32.const 0))
  (func (export "wg_execute") (param i32 i32) (result i32) (i32.const 0))
  (func (export "wg_output_ptr") (result i32) (i32.const 0))
  (func (export "wg_output_len") (result i32) (i32.const 0))
)
