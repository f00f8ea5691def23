export function createDriver(): never { throw new Error('memory driver: not yet'); }
