// Types of generate.mjs, for the test that regenerates in memory and compares with the committed file.
export declare const DOCUMENT_PATH: string;
export declare const OUTPUT_PATH: string;
export declare function generate(documentText: string): Promise<string>;
