// greeter: a factory, configured by the request's context.config (the env
// of factories).
interface Config {
  greeting: string;
  punctuation?: string;
}

export default function makeGreeter(config?: Config) {
  if (config === undefined) return null;
  return {
    execute: ({ name }: { name: string }) => ({ message: `${config.greeting}, ${name}${config.punctuation ?? "."}` }),
  };
}
