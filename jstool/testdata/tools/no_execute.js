export default { description: "has no execute" };
