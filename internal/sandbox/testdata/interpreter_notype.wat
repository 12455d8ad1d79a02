;; interpreter_notype: an interpreter with a table but no function type
;; (i32, i32, i32) -> i32 for the added function to call, which
;; sandbox.PrepareInterpreter refuses.
;;
;; Build: wat2wasm interpreter_notype.wat -o interpreter_notype.wasm
(module
  (table 1 funcref)
  (elem (i32.const 0) $sum)
  (func (export "_start"))
  (func $sum (param i32 i32) (result i32)
    (i32.add (local.get 0) (local.get 1)))
)
