console.log("this never runs");
const total = ;
