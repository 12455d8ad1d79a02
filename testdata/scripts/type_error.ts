// A type annotation esbuild cannot strip.
console.log("this never runs");
let total: number = 1
total x= 2;
