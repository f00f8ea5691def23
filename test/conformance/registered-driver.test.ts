// registerDriver end to end: the memory driver, registered under memtest:// through the public
// registerDriver as a third-party driver would be, passes the whole suite from tidings/testing.
import { registerDriver } from 'tidings';
import { memoryConformanceSubject, runConformanceSuite } from 'tidings/testing';

// The built memory driver: the instance tidings/testing's broker hooks talk to.
registerDriver('memtest', () => import('../../dist/drivers/memory/index.js'));

runConformanceSuite(memoryConformanceSubject({ scheme: 'memtest' }));
