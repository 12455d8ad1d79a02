// A default object with execute, and a helper it calls through this.
export default {
  prefix: "hello ",
  execute({ name }) {
    return { greeting: this.prefix + name };
  },
};
