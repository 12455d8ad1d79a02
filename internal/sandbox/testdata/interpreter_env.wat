;; interpreter_env: the imports of interpreter.wat, instantiated as "env".
;;
;; Build: wat2wasm interpreter_env.wat -o interpreter_env.wasm
(module
  (global (export "base") i32 (i32.const 1000))
  (func (export "twice") (param i32) (result i32)
    (i32.mul (local.get 0) (i32.const 2)))
)
