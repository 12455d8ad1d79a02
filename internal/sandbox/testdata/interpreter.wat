;; interpreter: the shape sandbox.PrepareInterpreter is made for, in small.
;; Like CPython for WASI it imports functions (so its own functions' indices
;; start after theirs), keeps its C stack pointer in a mutable global it does
;; not export, and holds its C functions in table 0, the function pointers
;; its data refers to; unlike CPython it also imports a global (so its own
;; globals' indices start after it), exports one mutable global already, and
;; puts an entry of another type in the table. interpreter_env.wat gives the
;; imports. Built with --debug-names, so that it carries a "name" custom
;; section for the preparation to keep.
;;
;; Build: wat2wasm --debug-names interpreter.wat -o interpreter.wasm
;; (see interpreter_test.go; make guests rebuilds it).
(module
  (type $call (func (param i32 i32 i32) (result i32)))
  (import "env" "base" (global $base i32))
  (import "env" "twice" (func $twice (param i32) (result i32)))
  (memory (export "memory") 1)
  ;; global 1: the C stack pointer, mutable and not exported.
  (global $sp (mut i32) (i32.const 65536))
  ;; global 2: mutable and exported already, so not exported again.
  (global $calls (export "calls") (mut i32) (i32.const 0))
  ;; global 3: immutable, so not exported.
  (global $seven i32 (i32.const 7))
  (table 3 funcref)
  (elem (i32.const 0) $digits $doubled_sum $negate)
  ;; digits(a, b, c) = base + 100a + 10b + c: tells the arguments' order.
  (func $digits (type $call)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.add (global.get $base)
      (i32.add (i32.mul (local.get 0) (i32.const 100))
        (i32.add (i32.mul (local.get 1) (i32.const 10)) (local.get 2)))))
  ;; doubled_sum(a, b, c) = 2(a + b + c), through the imported function.
  (func $doubled_sum (type $call)
    (call $twice (i32.add (local.get 0) (i32.add (local.get 1) (local.get 2)))))
  ;; negate has another type: a call through the added function traps.
  (func $negate (param i32) (result i32)
    (i32.sub (i32.const 0) (local.get 0)))
  (func (export "_start")
    (global.set $sp (i32.sub (global.get $sp) (global.get $seven))))
)
