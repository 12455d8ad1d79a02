import * as yup from "yup";

const schema = yup.object({
  name: yup.string().required().min(2),
  age: yup.number().required().positive().integer(),
  email: yup.string().email(),
  website: yup.string().url().nullable(),
  tags: yup.array(yup.string()).default([]),
});

export async function execute() {
  const cast = schema.cast({ name: "Jo", age: "24", email: "jo@example.com", website: null });
  let errors = null;
  try {
    await schema.validate({ name: "J", age: -1.5, email: "nope" }, { abortEarly: false });
  } catch (e) {
    errors = { name: e.name, errors: e.errors, inner: e.inner.map((i) => [i.path, i.type]) };
  }
  return { cast, valid: await schema.isValid(cast), errors, described: schema.describe().fields.age };
}
