// Express 4 and Koa 2 are installed under aliases so one test run covers both majors of each
// framework; their public API is what the current majors' types describe for what we use.
declare module 'express4' {
  import express from 'express'
  export default express
}
declare module 'koa2' {
  import Koa from 'koa'
  export default Koa
}
