;; interpreter_notable: an interpreter with the (i32, i32, i32) -> i32 type
;; but no table to call through, which sandbox.PrepareInterpreter refuses.
;;
;; Build: wat2wasm interpreter_notable.wat -o interpreter_notable.wasm
(module
  (func (export "_start"))
  (func $sum (param i32 i32 i32) (result i32)
    (i32.add (local.get 0) (i32.add (local.get 1) (local.get 2))))
)
