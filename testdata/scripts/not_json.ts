// A result without a JSON form.
export default () => ({ f: () => 1 });
