// Placeholder for commands whose part of the product is not built yet: says so instead of pretending.
const [command] = process.argv.slice(2);
console.error(`${command}: not yet built. See the README's "Status" section for what works today.`);
process.exit(1);
